from services.controller.main import main

main()
